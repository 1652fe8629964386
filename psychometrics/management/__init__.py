"""Management commands of the psychometrics domain."""
