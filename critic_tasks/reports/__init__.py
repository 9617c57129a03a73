"""What people read: tables of results with their intervals (``tables``, ``results``), ``critic-eval report``'s
Markdown / CSV / HTML (``report``), charts (``charts``) and the CI gate (``gate``)."""
