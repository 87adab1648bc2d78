"""Exporters: leaf tasks written out in another benchmark's layout (`harbor.py`: Harbor task folders, for
cloud sandboxes), the mirror of `importers/`."""
