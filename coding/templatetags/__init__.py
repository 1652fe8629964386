"""Template filters of the coding app."""
