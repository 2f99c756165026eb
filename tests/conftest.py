"""Shared test set-up. Server fixtures come from the aiocoord pytest plugin (pytest11)."""
