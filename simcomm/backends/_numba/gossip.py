"""Kernels (placeholder until filled)."""

__all__: list[str] = []
