"""Why a pending job waits, in people's words, with the numbers behind it."""
