# Emptying a folder at any depth, without recursion or long paths: the one walk of _limits.py's remove_tree (work
# dirs after an item) and of the zygote's reset (the sandbox's /tmp between items). Imported there; it is
# also pasted in front of zygote.py, which runs inside the sandbox where no critic_tasks package can be imported:
# so it uses the standard library only, and its names keep clear of zygote.py's.
import os as _tree_os

TREE_FLAGS = _tree_os.O_RDONLY | _tree_os.O_DIRECTORY | _tree_os.O_NOFOLLOW


def empty_folder(fd, keep=()):
    """Remove what is inside the open folder ``fd`` at any depth, and close it (whichever folder it holds at the
    end), except the entries of ``fd`` itself named in ``keep``. Iterative, one directory descriptor at a time
    (``..`` to climb: the programs that made the tree are dead), so a 3,000-deep tree neither recurses nor exceeds
    PATH_MAX; never follows a symlink; opens up folders a program closed (chmod 0). Raises OSError where it cannot."""
    names = []  # the folders we are in, below the first
    try:
        while True:
            inner = None
            try:
                entries = list(_tree_os.scandir(fd))
            except PermissionError:
                _tree_os.fchmod(fd, 0o700)
                entries = list(_tree_os.scandir(fd))
            for entry in entries:
                if not names and entry.name in keep:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    inner = entry.name
                    break
                tree_retry(_tree_os.unlink, entry.name, fd)
            if inner is not None:
                try:
                    child = _tree_os.open(inner, TREE_FLAGS, dir_fd=fd)
                except PermissionError:
                    _tree_os.chmod(inner, 0o700, dir_fd=fd)
                    child = _tree_os.open(inner, TREE_FLAGS, dir_fd=fd)
                _tree_os.close(fd)
                fd = child
                names.append(inner)
                continue
            if not names:
                return
            parent = _tree_os.open("..", TREE_FLAGS, dir_fd=fd)
            _tree_os.close(fd)
            fd = parent
            tree_retry(_tree_os.rmdir, names.pop(), fd)
    finally:
        _tree_os.close(fd)


def tree_retry(remove, name, fd):
    """``remove(name)`` in the folder ``fd``, opening the folder for writing first if a program closed it."""
    try:
        remove(name, dir_fd=fd)
    except PermissionError:
        _tree_os.fchmod(fd, 0o700)
        remove(name, dir_fd=fd)
