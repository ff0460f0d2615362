"""coze_lab on a shared JupyterHub: the admin's config lines and the local demo hub."""
