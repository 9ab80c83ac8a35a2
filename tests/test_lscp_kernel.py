"""LSCP's local correlations (stragglers/methods/_lscp_kernel.py) give scipy's `pearsonr`
statistic bit for bit, and FastLSCP PyOD's LSCP scores."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from neighbour_samples import varied_rows
from scipy.stats import pearsonr

from stragglers.methods._lscp_kernel import FastLSCP, pearson_statistic, pearson_statistics


def _pairs():
    """Pairs as LSCP's local regions give them, and the edge cases of scipy's code: two
    points (rounded to +-1), constant inputs (NaN), nearly collinear, wide scales, ties."""
    rng = np.random.default_rng(11)
    for trial in range(3000):
        n = int(rng.integers(2, 70))
        x = rng.normal(size=n) * 10 ** rng.uniform(-6, 6)
        y = rng.normal(size=n) + rng.uniform(-1e3, 1e3)
        shape = trial % 6
        if shape == 1:
            x, y = np.round(x), np.round(y, 1)
        elif shape == 2:
            y = 3 * x + 1
        elif shape == 3:
            x = np.full(n, 2.5)
        elif shape == 4:
            y = -x + 1e-9 * rng.normal(size=n)
        elif shape == 5:
            x = np.r_[np.zeros(n - 1), 1.0]
        yield x, y
    # what standardised scores of a constant detector hold: NaN and infinities
    yield np.array([np.nan, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    yield np.array([np.inf, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    yield np.array([np.nan, np.nan]), np.array([1.0, 2.0])


def test_pearson_statistic_equals_scipys():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x, y in _pairs():
            expected = np.float64(pearsonr(x, y)[0])
            ours = np.float64(pearson_statistic(x, y)[0])
            assert ours.tobytes() == expected.tobytes() or (
                np.isnan(ours) and np.isnan(expected)
            ), (x, y)


def test_pearson_statistic_rejects_what_scipy_rejects():
    with pytest.raises(ValueError):
        pearson_statistic(np.array([1.0]), np.array([2.0]))
    with pytest.raises(ValueError):
        pearson_statistic(np.arange(3.0), np.arange(4.0))


@pytest.mark.parametrize("rows", [12, 40, 150])
def test_fast_lscp_scores_equal_pyods(rows):
    """Same training scores, test scores and labels as PyOD's LSCP (LOF base detectors, as
    the method builds them), with PyOD's `pearsonr` restored afterwards."""
    import pyod.models.lscp as pyod_lscp
    from pyod.models.lof import LOF

    rng = np.random.default_rng(rows)
    train = np.round(rng.normal(size=(rows, 5)), 1)
    test = rng.normal(size=(rows // 2 + 3, 5))

    def make(cls):
        base = [LOF(n_neighbors=min(k, rows - 1)) for k in (5, 10)]
        return cls(base, local_region_size=min(30, rows), contamination=0.1, random_state=3)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = make(pyod_lscp.LSCP).fit(train), make(FastLSCP).fit(train)
        assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes()
        assert ours.threshold_ == theirs.threshold_
        assert ours.decision_function(test).tobytes() == theirs.decision_function(test).tobytes()
        assert (ours.predict(test) == theirs.predict(test)).all()
    assert pyod_lscp.pearsonr is pearsonr
    assert pyod_lscp.argmaxn.__module__ == "pyod.utils.utility"


def test_top_n_indices_equals_argmaxn():
    """The largest bins of histograms (ties among them) and other 1-D arrays, both orders."""
    from pyod.utils.utility import argmaxn

    from stragglers.methods._lscp_kernel import top_n_indices

    rng = np.random.default_rng(5)
    for trial in range(2000):
        length = int(rng.integers(1, 12))
        values = rng.integers(0, 4, size=length) if trial % 2 else rng.normal(size=length)
        for n in range(1, length + 1):
            for order in ("desc", "asc"):
                try:
                    expected = argmaxn(values, n, order=order)
                except ValueError:  # 'asc' with n = length: both partition out of bounds
                    with pytest.raises(ValueError):
                        top_n_indices(values, n, order=order)
                    continue
                ours = top_n_indices(values, n, order=order)
                assert ours.dtype == expected.dtype
                assert (ours == expected).all(), (values, n, order)
    with pytest.raises(ValueError):
        top_n_indices(np.arange(3), 4)


def test_pearson_statistics_equal_scipys_row_by_row():
    """Every row of a batch of regions of one length gives scipy's statistic for that row,
    bit for bit (lengths 2 to 70: numpy's pairwise sums unrolled and not, constant rows,
    NaN and infinite scores)."""
    rng = np.random.default_rng(17)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for length in list(range(2, 20)) + [31, 64, 70, 130]:
            x = rng.normal(size=(25, length)) * 10 ** rng.uniform(-6, 6, size=(25, 1))
            y = rng.normal(size=(25, length)) + rng.uniform(-1e3, 1e3, size=(25, 1))
            x[1] = 2.5  # constant
            y[2] = -y[2, 0]  # constant
            x[3] = np.round(x[3])
            y[4] = 3 * x[4] + 1
            y[5] = -x[5] + 1e-9 * rng.normal(size=length)
            x[6, 0] = np.nan
            y[7, -1] = np.inf
            ours = pearson_statistics(x, y)
            for i in range(len(x)):
                expected = np.float64(pearsonr(x[i], y[i])[0])
                assert ours[i].tobytes() == expected.tobytes() or (
                    np.isnan(ours[i]) and np.isnan(expected)
                ), (length, i)
    with pytest.raises(ValueError):
        pearson_statistics(np.ones((3, 1)), np.ones((3, 1)))


def _counter_regions(neighbours, threshold):
    """PyOD's selection of the local region from the neighbours met, as its loop does it."""
    import collections

    regions = []
    for row in neighbours.tolist():
        counts = collections.Counter(row)
        decrease = 0
        kept = [item for item, count in counts.items() if count > threshold]
        while len(kept) < 2:
            decrease += 1
            assert decrease < threshold
            kept = [item for item, count in counts.items() if count > threshold - decrease]
        regions.append(kept)
    return regions


def test_frequent_neighbours_equal_pyods_counter():
    """Regions in order of first meeting, the threshold lowered when fewer than two pass,
    and PyOD's assertion where it would have to reach 0."""
    from stragglers.methods._lscp_kernel import frequent_neighbours

    rng = np.random.default_rng(23)
    for trial in range(400):
        n_train = int(rng.integers(2, 40))
        iterations = int(rng.integers(1, 8))
        k = int(rng.integers(1, n_train + 1))
        neighbours = np.hstack(
            [
                np.stack([rng.permutation(n_train)[:k] for _ in range(int(rng.integers(1, 9)))])
                for _ in range(1)
            ]
            * iterations
        )
        if trial % 3:  # the iterations disagree: counts spread, thresholds lowered
            neighbours = rng.integers(0, n_train, size=neighbours.shape)
        threshold = int(rng.integers(1, iterations + 2))
        try:
            expected = _counter_regions(neighbours, threshold)
        except AssertionError:
            _, starts = frequent_neighbours(neighbours, n_train, threshold)
            assert len(starts) == 1 and starts[0] < 0, trial
            continue
        members, starts = frequent_neighbours(neighbours, n_train, threshold)
        ours = [members[starts[i] : starts[i + 1]].tolist() for i in range(len(neighbours))]
        assert ours == expected, trial


def _fitted_pair(train, seed, **params):
    """PyOD's LSCP and FastLSCP fitted alike (their random states left equal); None where
    PyOD's fit raises, after checking FastLSCP's raises too."""
    from pyod.models.lof import LOF

    rows = len(train)

    def make(cls):
        base = [LOF(n_neighbors=max(1, min(k, rows - 1))) for k in (5, 10)]
        return cls(base, contamination=0.1, random_state=seed, **params)

    import pyod.models.lscp as pyod_lscp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = make(pyod_lscp.LSCP).fit(train)
        except ValueError:  # numpy's histogram of nearly equal correlations: so does ours
            with pytest.raises(ValueError):
                make(FastLSCP).fit(train)
            return None
        return theirs, make(FastLSCP).fit(train)


def test_local_regions_equal_pyods():
    """The same regions as PyOD's `_get_local_region`, from the same random draws (the
    random states stay equal after), with scikit-learn's `check_array` back afterwards."""
    import copy

    import sklearn.neighbors._kd_tree as kd_tree
    from sklearn.utils import check_array

    rng = np.random.default_rng(29)
    for trial in range(12):
        rows, columns = int(rng.integers(3, 80)), int(rng.integers(1, 7))
        train = rng.normal(size=(rows, columns))
        if trial % 2:
            train = np.round(train)
            train[: rows // 3] = train[0]  # duplicated rows: tied neighbours
        test = np.vstack([rng.normal(size=(7, columns)), train[:4]])
        fitted = _fitted_pair(train, trial, local_region_size=min(30, rows))
        if fitted is None:
            continue
        theirs, ours = fitted
        theirs.random_state, ours.random_state = (
            copy.deepcopy(theirs.random_state),
            copy.deepcopy(theirs.random_state),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = theirs._get_local_region(test)
            members, starts = ours._local_regions(test)
        assert [members[starts[i] : starts[i + 1]].tolist() for i in range(len(test))] == expected
        assert ours.random_state.randint(1 << 30) == theirs.random_state.randint(1 << 30)
    assert kd_tree.check_array is check_array


def test_trusted_check_array_returns_what_check_array_returns_or_its_error():
    from sklearn.utils import check_array

    from stragglers.methods._lscp_kernel import _trusted_check_array

    plain = np.random.default_rng(1).normal(size=(5, 3))
    assert _trusted_check_array(plain, dtype=np.float64, order="C") is plain
    columns = plain[:, [2, 0]]  # as the trees get them: a column draw, not C-ordered
    ours = _trusted_check_array(columns, dtype=np.float64, order="C")
    assert ours.flags.c_contiguous
    assert ours.tobytes() == check_array(columns, dtype=np.float64, order="C").tobytes()
    for bad in (np.array([[1.0, np.nan]]), np.array([[np.inf, 1.0]]), np.zeros((0, 3))):
        with pytest.raises(ValueError):
            check_array(bad, dtype=np.float64, order="C")
        with pytest.raises(ValueError):
            _trusted_check_array(bad, dtype=np.float64, order="C")
    for other in (np.asfortranarray(plain), plain.astype(np.float32), plain.tolist()):
        expected = check_array(other, dtype=np.float64, order="C")
        ours = _trusted_check_array(other, dtype=np.float64, order="C")
        assert ours.flags.c_contiguous and ours.tobytes() == expected.tobytes()


def _correlation_rows(rng, n_clf):
    """Rows of correlations as LSCP's detectors give them, and histogram edge cases: ties,
    equal rows, NaN, values on bin edges, ranges too narrow for numpy's bins."""
    rows = [np.clip(rng.normal(size=n_clf) * 0.5, -1, 1) for _ in range(300)]
    rows += [np.round(rng.uniform(-1, 1, size=n_clf), 1) for _ in range(300)]
    rows += [np.full(n_clf, 0.3), np.full(n_clf, -1.0), np.linspace(-1, 1, n_clf)]
    rows += [np.r_[np.nan, rng.uniform(-1, 1, size=n_clf - 1)], np.full(n_clf, np.nan)]
    rows += [np.r_[5e-324, np.zeros(n_clf - 1)], np.r_[1e-300, 1e-300 + np.zeros(n_clf - 1)]]
    rows += [np.r_[1.0, np.nextafter(1.0, 0) * np.ones(n_clf - 1)]]
    rows += [np.r_[0.1, 0.1 + np.arange(1, n_clf) * 2.0**-55]]
    return np.array(rows)


@pytest.mark.parametrize("n_clf", [2, 3, 5])
def test_competent_detector_masks_equal_pyods_candidates(n_clf):
    """Every number of bins and of selected bins: the same candidate list as PyOD's
    `_get_competent_detectors` (histogram, largest bins, scores inside them), or the row
    left to PyOD's function."""
    import pyod.models.lscp as pyod_lscp

    from stragglers.methods._lscp_kernel import competent_detector_masks

    rng = np.random.default_rng(n_clf)
    correlations = _correlation_rows(rng, n_clf)
    detector = pyod_lscp.LSCP.__new__(pyod_lscp.LSCP)
    detector.n_clf = n_clf
    left_to_pyod = 0
    for n_bins in range(1, n_clf + 1):
        for n_selected in range(1, n_bins + 1):
            detector.n_bins, detector.n_selected = n_bins, n_selected
            masks, other = competent_detector_masks(correlations, n_bins, n_selected)
            left_to_pyod += len(other)
            for i, row in enumerate(correlations):
                if i in other:
                    continue
                expected = detector._get_competent_detectors(row.copy())
                ours = (np.flatnonzero(masks[i].ravel()) % n_clf).tolist()
                assert ours == expected, (row, n_bins, n_selected)
    assert left_to_pyod > 0  # the zero-step rows do reach PyOD's function


def test_competent_means_equal_pyods_scores():
    """The scores of the test rows, rows whose histogram goes to PyOD's function included;
    a row on which numpy's histogram raises (too narrow a range, an infinite score) raises
    the same."""
    import pyod.models.lscp as pyod_lscp

    rng = np.random.default_rng(31)
    for n_clf in (2, 3, 4):
        correlations = np.vstack(
            [_correlation_rows(rng, n_clf), np.r_[np.inf, np.zeros(n_clf - 1)]]
        )
        test_scores = rng.normal(size=(len(correlations), n_clf))
        test_scores[5, 0] = np.nan
        for n_bins in (1, n_clf, 10):
            slow = pyod_lscp.LSCP.__new__(pyod_lscp.LSCP)
            fast = FastLSCP.__new__(FastLSCP)
            for detector in (slow, fast):
                detector.n_clf, detector.n_bins, detector.n_selected = n_clf, n_bins, 1
            expected, raising = [], []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for i, row in enumerate(correlations):
                    try:
                        candidates = slow._get_competent_detectors(row.copy())
                    except ValueError:
                        raising.append(i)
                        continue
                    expected.append(np.mean(test_scores[i, candidates]))
                kept = np.setdiff1d(np.arange(len(correlations)), raising)
                ours = fast._competent_means(correlations[kept], test_scores[kept])
                assert ours.tobytes() == np.array(expected).tobytes(), (n_clf, n_bins)
                assert fast.n_bins == slow.n_bins
                # the infinite row, and with two bins or more a too narrow one
                assert len(raising) >= (2 if slow.n_bins > 1 else 1)
                for i in raising:
                    with pytest.raises(ValueError):
                        fast._competent_means(correlations[[0, i]], test_scores[[0, i]])


def test_fast_lscp_equals_pyods_on_many_batches():
    """Fits and batch scores on random shapes: ties, duplicated rows, a constant column,
    training sets near the local region's size."""
    rng = np.random.default_rng(37)
    for trial in range(25):
        rows, columns = int(rng.integers(3, 90)), int(rng.integers(1, 7))
        train = varied_rows(rng, trial, rows, columns)
        test = np.vstack([rng.normal(size=(int(rng.integers(1, 30)), columns)), train[:3]])
        fitted = _fitted_pair(train, trial, local_region_size=min(30, rows))
        if fitted is None:
            continue
        theirs, ours = fitted
        assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes(), trial
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = theirs.decision_function(test)
            assert ours.decision_function(test).tobytes() == expected.tobytes(), trial


def _neighbour_cases():
    """Training and query rows as LSCP's local regions get them: normal, rounded (tied
    distances), a constant column, repeated rows, tiny sets (k up to n), a real job's size."""
    rng = np.random.default_rng(41)
    for trial in range(160):
        rows = int(rng.integers(1, 8)) if trial % 4 == 0 else int(rng.integers(8, 120))
        if trial % 40 == 1:
            rows = 330
        columns = int(rng.integers(1, 14))
        data = varied_rows(rng, trial, rows, columns)
        if trial % 7 == 0:
            data = np.round(data * 4) / 4  # coarse grid: many equal distances
        query = np.vstack([varied_rows(rng, trial + 1, int(rng.integers(1, 20)), columns), data])
        query = query[rng.permutation(len(query))[: int(rng.integers(1, len(query) + 1))]]
        for k in sorted({1, min(2, rows), rows, int(rng.integers(1, rows + 1)), min(30, rows)}):
            yield data, query, k


def test_nearest_neighbours_equal_the_kd_trees():
    """Every k from 1 to n, ties included: the KD-tree's indices in its order, and each row's
    k + 1 smallest reduced distances (the tree's, squared) in increasing order."""
    from sklearn.neighbors import KDTree

    from stragglers.methods._lscp_kernel import nearest_neighbours

    tied_rows = 0
    for data, query, k in _neighbour_cases():
        tree = KDTree(data)
        expected_distances, expected = tree.query(query, k=k)
        ours, distances, nearest = nearest_neighbours(data, query, k)
        assert ours.dtype == expected.dtype and np.array_equal(ours, expected), (data.shape, k)
        width = min(k + 1, len(data))
        assert distances.shape == nearest.shape == (len(query), width)
        assert np.array_equal(np.sqrt(distances[:, :k]), expected_distances)
        wider = tree.query(query, k=width)[0] ** 2
        assert np.allclose(distances, wider, rtol=1e-12, atol=0)
        tied_rows += int(np.any(distances[:, 1:] == distances[:, :-1], axis=1).sum())
    assert tied_rows > 100  # the tree's order of equals was exercised


def _growing_fits(rng, trial):
    """A job's successive training sets: rows added (at the end or anywhere), by trial a
    repeated row, a row whose value moved (no reuse) or an unchanged set."""
    columns = int(rng.integers(1, 14))
    pool = varied_rows(rng, trial, int(rng.integers(12, 90)), columns)
    if trial % 3 == 0:
        pool = np.round(pool * 2) / 2
    size = int(rng.integers(1, 40))
    order = rng.permutation(len(pool)).tolist()
    sets = []
    while size <= len(pool):
        chosen = sorted(order[:size]) if trial % 2 else order[:size]
        sets.append(pool[chosen].copy())
        size += int(rng.integers(0, 4))
        if rng.random() < 0.1:
            size += 1
    if trial % 5 == 1 and len(sets) > 2:
        sets[1] = np.vstack([sets[1], sets[1][:1]])  # a repeated row
    if trial % 5 == 2 and len(sets) > 3:
        sets[2] = sets[2].copy()
        sets[2][0, 0] += 1.0  # a changed row: its old tables are not used
    return sets


def test_neighbour_tables_reused_across_fits_give_the_kd_trees_neighbours():
    from sklearn.neighbors import KDTree

    from stragglers.methods._lscp_kernel import NeighbourTables, nearest_neighbours

    rng = np.random.default_rng(43)
    reused = 0
    for trial in range(60):
        memory = NeighbourTables()
        draws = [rng.permutation(14)[: int(rng.integers(1, 14))] for _ in range(3)]
        for train in _growing_fits(rng, trial):
            tables, previous = memory.start(train)
            for draw in draws:
                features = draw[draw < train.shape[1]]
                if len(features) == 0:
                    continue
                data = train[:, features]
                for k in {1, min(5, len(data)), min(30, len(data)), len(data)}:
                    key = (tuple(features.tolist()), k)
                    known = previous.known(key) if previous is not None else None
                    reused += known is not None
                    ours, distances, nearest = nearest_neighbours(data, data, k, known)
                    expected = KDTree(data).query(data, k=k)[1]
                    assert np.array_equal(ours, expected), (trial, len(data), k)
                    fresh = nearest_neighbours(data, data, k)
                    assert np.array_equal(distances, fresh[1])
                    if tables is not None:
                        tables.tables[key] = (distances, nearest)
            if tables is not None:
                memory.remember(tables)
    assert reused > 500


def test_fast_lscp_with_neighbour_tables_scores_as_without():
    """Fits on growing training sets sharing one NeighbourTables: the same training scores,
    threshold, test scores and random state as fits without it (themselves PyOD's)."""
    from pyod.models.lof import LOF

    from stragglers.methods._lscp_kernel import NeighbourTables

    rng = np.random.default_rng(47)
    compared = 0
    for trial in range(12):
        memory = NeighbourTables()
        for train in _growing_fits(rng, trial)[:8]:
            rows = len(train)
            test = np.vstack([rng.normal(size=(5, train.shape[1])), train[:3]])
            results = []
            for tables in (None, memory):
                base = [LOF(n_neighbors=max(1, min(k, rows - 1))) for k in (5, 10)]
                detector = FastLSCP(
                    base, contamination=0.1, random_state=42, local_region_size=min(30, rows)
                )
                detector.neighbour_tables = tables
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        detector.fit(train)
                        scores = detector.decision_function(test)
                    except (ValueError, AssertionError) as error:
                        results.append(type(error))
                        continue
                results.append(
                    (
                        detector.decision_scores_.tobytes(),
                        np.float64(detector.threshold_).tobytes(),
                        scores.tobytes(),
                        detector.random_state.randint(1 << 30),
                    )
                )
            assert results[0] == results[1], (trial, rows)
            compared += 1
    assert compared > 40


def _numpy_squared_distances(query, data):
    """The reduced distances as numpy computes them column by column (the KD-tree's order)."""
    total = np.zeros((len(query), len(data)))
    for column in range(query.shape[1]):
        difference = query[:, column, None] - data[None, :, column]
        total += difference * difference
    return total


def test_compiled_squared_distances_equal_numpys_bits():
    from stragglers.methods._lscp_kernel import squared_distances

    cases = 0
    for data, query, _ in _neighbour_cases():
        ours = squared_distances(query, data)
        assert ours.tobytes() == _numpy_squared_distances(query, data).tobytes(), data.shape
        cases += 1
    # non-contiguous column picks (LSCP's feature draws), float32 rows, no columns
    rng = np.random.default_rng(53)
    rows = rng.normal(size=(40, 9)) * 1e3
    picked = rows[:, [7, 2, 5]]
    assert (
        squared_distances(picked[:5], picked).tobytes()
        == _numpy_squared_distances(picked[:5], picked).tobytes()
    )
    small = rows.astype(np.float32)
    assert (
        squared_distances(small, small).tobytes()
        == _numpy_squared_distances(small, small).tobytes()
    )
    empty = np.zeros((4, 0))
    assert squared_distances(empty, empty).tobytes() == np.zeros((4, 4)).tobytes()
    assert cases > 500


def _smallest_cases():
    """Distance rows: distinct, tied inside and at the boundary of the k + 1 smallest, every
    value equal, NaN and infinities, a single column, width up to the row length."""
    rng = np.random.default_rng(59)
    for trial in range(400):
        columns = int(rng.integers(1, 6)) if trial % 5 == 0 else int(rng.integers(6, 140))
        rows = int(rng.integers(1, 40))
        values = rng.random((rows, columns))
        if trial % 3 == 1:
            values = np.round(values * 8) / 8  # many ties
        if trial % 11 == 2:
            values[:] = 0.25
        if trial % 13 == 3:
            values[rng.random(values.shape) < 0.05] = np.nan
        if trial % 17 == 4:
            values[rng.random(values.shape) < 0.1] = np.inf
        for width in sorted({1, columns, int(rng.integers(1, columns + 1)), min(31, columns)}):
            yield values, width


def test_smallest_distances_equal_numpys_partition_and_stable_sort():
    from stragglers.methods._lscp_kernel import _smallest, smallest_distances

    compiled_rows = 0
    for values, width in _smallest_cases():
        indices = np.broadcast_to(np.arange(values.shape[1]), values.shape)
        expected_distances, expected_nearest = _smallest(values, indices, width)
        distances, nearest = smallest_distances(values, width)
        assert distances.tobytes() == expected_distances.tobytes(), (values.shape, width)
        assert nearest.dtype == expected_nearest.dtype
        assert np.array_equal(nearest, expected_nearest), (values.shape, width)
        kept = np.sort(values, axis=1)[:, : min(width + 1, values.shape[1])]
        distinct = ~np.any(kept[:, 1:] == kept[:, :-1], axis=1) & ~np.isnan(kept).any(axis=1)
        compiled_rows += int(distinct.sum())
    assert compiled_rows > 2000  # the compiled pass, not only numpy's, was compared


def test_standardized_pair_equals_pyods_standardizer():
    """Random, constant, nearly constant, huge and tiny columns, one row, Fortran-ordered and
    sliced arrays: the same bits and layout as PyOD's `standardizer`; NaN, infinities, other
    dtypes, empty or mismatched arrays get PyOD's own answer or error."""
    from pyod.utils.utility import standardizer

    from stragglers.methods._lscp_kernel import standardized_pair

    rng = np.random.default_rng(67)
    compared = 0
    for trial in range(300):
        rows, columns = int(rng.integers(1, 60)), int(rng.integers(1, 12))
        train = rng.normal(size=(rows, columns)) * 10.0 ** rng.integers(-8, 9, size=columns)
        if trial % 3 == 0:
            train[:, rng.integers(0, columns)] = rng.normal()  # a constant column
        if trial % 5 == 1:
            train[:, 0] = 1.0 + rng.integers(0, 2, size=rows) * 1e-15  # nearly constant
        if trial % 7 == 2:
            train = np.round(train)
        if trial % 8 == 6:
            # a large column varying in its last bit: constant by the scaler's relative bound
            train[:, -1] = 1e8 + rng.integers(0, 2, size=rows) * 1.5e-8
        test = rng.normal(size=(int(rng.integers(1, 30)), columns))
        if trial % 4 == 3:
            train, test = np.asfortranarray(train), np.asfortranarray(test)
        if trial % 6 == 5 and columns > 1:
            train, test = train[:, ::2], test[:, ::2]
        expected = standardizer(train, test)
        ours = standardized_pair(train, test)
        for mine, theirs in zip(ours, expected, strict=True):
            assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
            assert mine.flags.c_contiguous == theirs.flags.c_contiguous
            assert mine.tobytes(order="A") == theirs.tobytes(order="A"), trial
        compared += 1
    assert compared == 300
    train = rng.normal(size=(10, 3))
    for bad_train, bad_test in [
        (np.where(train > 1, np.nan, train), train),
        (train, np.where(train > 1, np.inf, train)),
        (train[:, :2], train),
        (train[:0], train),
    ]:
        with pytest.raises(ValueError):
            standardizer(bad_train, bad_test)
        with pytest.raises(ValueError):
            standardized_pair(bad_train, bad_test)
    small = train.astype(np.float32)
    for mine, theirs in zip(
        standardized_pair(small, small), standardizer(small, small), strict=True
    ):
        assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes()


def test_lscp_with_shared_search_lofs_equals_pyods():
    """The method's base detectors (`shared_search_lofs`: lean LOFs sharing one tree and
    query per set of rows, thresholds deferred) give PyOD's LSCP with PyOD's LOFs: the same
    training scores, threshold and scores of new rows, on ties, repeated rows, a constant
    column, tiny training sets and equal sizes; the LOFs' thresholds, read, are PyOD's."""
    import pyod.models.lscp as pyod_lscp
    from pyod.models.lof import LOF

    from stragglers.methods.lscp import shared_search_lofs

    rng = np.random.default_rng(53)
    for trial in range(40):
        rows, columns = int(rng.integers(3, 120)), int(rng.integers(1, 8))
        train = varied_rows(rng, trial, rows, columns)
        test = np.vstack([varied_rows(rng, trial + 1, int(rng.integers(1, 25)), columns), train])
        sizes = [max(1, min(k, rows - 1)) for k in ((5, 10), (3, 3), (1, 20))[trial % 3]]
        region = min(30, rows)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                theirs = pyod_lscp.LSCP(
                    [LOF(n_neighbors=k) for k in sizes],
                    local_region_size=region,
                    contamination=0.1,
                    random_state=trial,
                ).fit(train)
            except ValueError:  # numpy's histogram of nearly equal correlations
                continue
            lofs = shared_search_lofs(sizes)
            ours = FastLSCP(
                lofs, local_region_size=region, contamination=0.1, random_state=trial
            ).fit(train)
            assert ours.decision_scores_.tobytes() == theirs.decision_scores_.tobytes(), trial
            assert ours.threshold_ == theirs.threshold_, trial
            try:
                expected = theirs.decision_function(test)
            except ValueError:  # the same histogram error, test row by test row
                with pytest.raises(ValueError):
                    ours.decision_function(test)
            else:
                assert ours.decision_function(test).tobytes() == expected.tobytes(), trial
            for lean, pyods in zip(lofs, theirs.detector_list):
                assert lean.threshold_ == pyods.threshold_, trial
                assert (lean.labels_ == pyods.labels_).all(), trial
