"""Transport: run commands on hosts (SSH through paramiko, or locally)."""
