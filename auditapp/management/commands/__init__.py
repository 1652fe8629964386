"""manage.py commands of the project: create_researcher."""
