"""Scorers that are not chat models: the audit engine's local Python scorers (and, later, HTTP JSON scorers)."""
