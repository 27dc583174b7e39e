"""Fuzzing of the control protocol from its schema (#15)."""
