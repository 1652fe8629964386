"""Paradigms of the audit engine: each builds requests, parses replies, analyses results."""
