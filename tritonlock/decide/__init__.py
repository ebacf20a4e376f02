"""Decide: the intent, the compatibility matrix, the host rules, the resolver, the packages' decision and `why`."""
