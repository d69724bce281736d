"""Transport: run commands on hosts (SSH through fabric, or locally)."""
