"""Stores: where assets live (local folder, GitHub Releases, S3, HTTP mirrors)."""
