"""The REST machinery every app's API uses: streamed CSV exports, pagination, content negotiation, bounded JSON
parsers, strict fields, the OpenAPI schema's error answers and the one handler of application errors."""
