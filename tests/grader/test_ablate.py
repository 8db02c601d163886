"""The ablation's families name real features and leave out exactly those columns."""

from grader.calibration.ablate import FAMILIES, columns_without
from grader.offline.evidence import ALL_MISCONCEPTION_FEATURES, ALL_POINT_FEATURES

EVERY_FEATURE = set(ALL_POINT_FEATURES) | set(ALL_MISCONCEPTION_FEATURES)


def test_every_family_names_only_features_the_reading_has():
    for name, family in FAMILIES.items():
        assert family and family <= EVERY_FEATURE, (name, sorted(family - EVERY_FEATURE))


def test_a_family_left_out_drops_exactly_its_columns():
    for family in FAMILIES.values():
        points, misconceptions = columns_without(family)
        kept = {ALL_POINT_FEATURES[i] for i in points} | {
            ALL_MISCONCEPTION_FEATURES[i] for i in misconceptions
        }
        assert kept == EVERY_FEATURE - family


def test_the_families_do_not_overlap():
    seen: set[str] = set()
    for family in FAMILIES.values():
        assert not family & seen
        seen |= family
