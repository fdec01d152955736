"""Adversarial cases: cli (see adversarial.py)."""

from __future__ import annotations

from adversarial import Adv

CASES: list[Adv] = []
