"""Studies, items (target sentence with its preceding and following context), participants, labels,
item imports, and (later) the labelling pages and aggregation."""
