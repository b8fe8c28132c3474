"""Flow projection and flow tables as Arrow tables."""

from __future__ import annotations

__all__ = ["flow_topn", "flows", "ip_to_str", "project", "read_batches"]


def project(source, *, filter=None):
    raise NotImplementedError("paclo.project")


def flows(source, **options):
    raise NotImplementedError("paclo.flows")


def flow_topn(source, n=10, **options):
    raise NotImplementedError("paclo.flow_topn")


def read_batches(path, **options):
    raise NotImplementedError("paclo.read_batches")


def ip_to_str(column):
    raise NotImplementedError("paclo.ip_to_str")
