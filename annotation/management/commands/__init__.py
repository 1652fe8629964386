"""manage.py commands of the annotation domain: import_items, load_demo."""
