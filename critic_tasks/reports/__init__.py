"""What people read: tables of results (next: intervals, charts, HTML, the CI gate)."""
