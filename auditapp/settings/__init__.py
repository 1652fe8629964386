"""Deprecated: the settings moved to ``config.settings``. Only ``production`` is kept under its old name here, for
deployments whose unit files or environment name it, until auditapp 0.2.0 (docs/operations.md, "Upgrading")."""
