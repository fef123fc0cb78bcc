"""dpcore.limits is the one home of every limit and ε grid; the old names elsewhere are the same objects."""

from dpcore import limits
from dpcore.attacks import linkage, reidentification
from dpcore.jobs import attempt, workers
from dpcore.noise import mechanisms, release, view


def test_old_names_are_aliases_of_the_limits():
    assert view.EPSILON_GRID is limits.NOISE_EPSILON_GRID
    assert view.DELTA_GRID is limits.NOISE_DELTA_GRID
    assert view.COMPARE_EPSILONS is limits.NOISE_COMPARE_EPSILONS
    assert view.TABLE_EPSILONS is limits.NOISE_TABLE_EPSILONS
    assert mechanisms.MAX_SIMULATED_DRAWS == limits.SIMULATED_DRAWS_MAX
    assert release.MAX_RELEASE_DRAWS == limits.RELEASE_DRAWS_MAX
    assert reidentification.EPSILONS is limits.REID_EPSILONS
    assert linkage.MAX_SENSITIVE_VALUES == limits.LINKAGE_MAX_SENSITIVE_VALUES
    assert attempt.MAX_HISTORY == limits.JOBS_MAX_HISTORY and workers.LOG_MAX_BYTES == limits.JOBS_LOG_MAX_BYTES


def test_grids_are_sorted_positive_and_inside_the_epsilon_limits():
    for grid in (
        limits.NOISE_EPSILON_GRID,
        limits.NOISE_COMPARE_EPSILONS,
        limits.NOISE_TABLE_EPSILONS,
        limits.REID_EPSILONS,
    ):
        assert list(grid) == sorted(set(grid))
        assert limits.EPSILON_MIN <= grid[0] and grid[-1] <= limits.EPSILON_MAX
    assert set(limits.NOISE_COMPARE_EPSILONS) <= set(limits.NOISE_EPSILON_GRID)
    assert all(0 < d < 1 for d in limits.NOISE_DELTA_GRID)
