"""A deliberately broken gateway for tests/service/test_poc.py: alias moves forget their gate.

On this directory's PYTHONPATH, a `gw serve` records every alias move with no gate decision (the
policy is still checked, the promotion still goes through): the link from a release record to the
gate that allowed it is lost, and `gw poc run` has to notice. Nothing else changes.
"""

import dataclasses

from gateway.store.releases import promotions

_move_alias = promotions.PromotionStore.move_alias


def _forgetful(self, move, **kwargs):
    return _move_alias(self, dataclasses.replace(move, gate_id=None), **kwargs)


promotions.PromotionStore.move_alias = _forgetful
