"""Retention: the policies of the site file, holds, and which run files a sweep may delete (pure)."""
