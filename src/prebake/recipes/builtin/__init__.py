"""Recipes that ship with prebake (each file defines ``RECIPE``; a workspace may override)."""
