"""What every app shares at its boundaries, and nothing of any domain: bounded JSON input, the checks of what a
participant's or coder's page sends, spreadsheet-safe cells, export rows, the application errors, and (``api/``)
the REST machinery (streamed CSV, pagination, negotiation, parsers, fields, the schema's error answers, the error
handler). It imports no app of the project."""
