"""Whole-program step measurements of real models (``steps.py``); see README.md. Never imports solkit."""
