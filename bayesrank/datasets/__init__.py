"""Real item sets: the Open Bandit Dataset sample (:mod:`bayesrank.datasets.obd`)."""

from bayesrank.datasets.obd import (
    CAMPAIGNS,
    PositionClicks,
    __all__,  # noqa: E402,F401  (the same public names)
    obd_feature_names,
    obd_item_ids,
    obd_items,
    obd_log_summary,
    obd_position_clicks,
)
