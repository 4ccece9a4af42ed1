"""Recommendation dedup: scalable Bloom filters of the items each visitor has seen."""
