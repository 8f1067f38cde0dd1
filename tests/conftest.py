"""Shared set-up of the workbench unit tests: import path and fixtures."""
import os
import sys

WORKBENCH = os.path.join(os.path.dirname(__file__), "..", "workbench")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, WORKBENCH)


def fixture_text(name):
    with open(os.path.join(FIXTURES, name)) as fp:
        return fp.read()
