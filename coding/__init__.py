"""Qualitative error analysis of LLM explanations (seed 000 §3.4 "Error Analysis", §4.3): coding rounds.

A researcher draws a stratified, seeded sample of a finished audit's labelled and explained replies, attaches one
codebook per analytical lens, and invites coders; each coder codes the whole sample alone under one lens. The
round's analysis gives each code's share of the sample, co-occurrences, codes by model and condition, convergence
across lenses, and agreement between coders who share a lens. People do the coding: this is not an audit
paradigm, and no scorer is involved.
"""
