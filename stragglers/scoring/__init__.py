"""Scoring beyond Table 3's confusion matrix (works on prediction tables only, like
`stragglers.evaluate`): `timing` says how early a flag came."""
