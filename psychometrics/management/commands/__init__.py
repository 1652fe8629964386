"""manage.py commands: import_annotator_data."""
