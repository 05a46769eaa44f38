"""Requests: lengths, arrivals, multi-turn sessions and closed loops.
"""
