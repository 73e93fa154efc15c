"""The declarative site file: its schema and parsing, and the rate table of its accounting section."""
