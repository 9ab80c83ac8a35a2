"""The stages of scikit-learn's squared-error gradient boosting, every tree grown as
scikit-learn grows it, in one compiled call per fit.

scikit-learn grows each stage's `DecisionTreeRegressor` with its best splitter, squared-error
criterion and depth-first builder (sklearn/tree/_splitter.pyx, _partitioner.pyx,
_criterion.pyx, _tree.pyx; sklearn/utils/_sorting.pyx). `grow_boosting_stages` gives the same
trees bit for bit: the same seed per tree from the boosting's random state, the same feature
draws (the splitter's xorshift generator), the same row order at every node, hence the same
sums, splits, thresholds, impurities and leaf values, and the same raw predictions.

Most of the library's time goes to sorting each node's rows by each drawn feature and to its
per-position calls. Here one stable presort per fit, partitioned down the tree, gives every
node's rows sorted by every feature; a feature whose values in the node are distinct has one
sorted order, the one the library's sort leaves. Where values tie, the library's order of the
tied rows decides the order of its sums, so its three-way introsort (`simultaneous_sort`, a
port) is replayed, but only where that order matters (`_best_split`): for an exact search
that rounding bounds cannot settle, and for the partition, whose order the children's sums
follow; and within such a sort only on the segments of its partitions that hold tied values
(`sort_tied_segments`, on keys of the values' ranks): a segment of distinct values ends in its
one sorted order. An exact search takes the criterion's updates past the middle from one
reverse pass (`_reverse_sums`) where the library restarts each from the node's totals. The
covered settings: dense float32 rows without NaN, one output, every feature, integer leaf and
split sizes, no leaf-count limit, no pruning, no monotonic constraints (`_gradient_boosting.py`
decides). tests/test_nurd_regressor_fits.py compares the trees, the training scores and the
predictions with scikit-learn's.
"""

from __future__ import annotations

import numba
import numpy as np

# sklearn/tree/_partitioner.pxd: values closer than this (in float32) do not split
FEATURE_THRESHOLD = np.float32(1e-7)
# sklearn/tree/_tree.pyx: the impurity under which a node is a leaf
EPSILON = float(np.finfo(np.float64).eps)
# sklearn/utils/_random.pxd: the splitter's generator's range and its seed for 0
RAND_R_MAX = 2147483647
DEFAULT_SEED = 1
TREE_LEAF = -1
TREE_UNDEFINED = -2
UNIT_ROUNDOFF = 2.0**-53
# a sort key: a value's rank among its feature's values above the row (`sort_tied_segments`)
RANK_SHIFT = 32
ROW_MASK = (1 << RANK_SHIFT) - 1
# the most rows the root's kept sorts hold together (`_replay_sorts`): 16 MB
ROOT_ORDERS_LIMIT = 2**21
# how the library's sort orders a node's rows by a feature (`_order_kind`)
DISTINCT, ALL_EQUAL, TIED = 0, 1, 2


@numba.njit(cache=True, nogil=True, inline="always")
def _rand_int(low, high, state):
    """sklearn/tree/_utils.pyx `rand_int` over `our_rand_r`: the xorshift draw in [low, high),
    `state` a one-element uint32 state held in an int64 array."""
    seed = state[0]
    if seed == 0:
        seed = DEFAULT_SEED
    seed ^= (seed << 13) & 0xFFFFFFFF
    seed ^= seed >> 17
    seed ^= (seed << 5) & 0xFFFFFFFF
    state[0] = seed
    return low + (seed % (RAND_R_MAX + 1)) % (high - low)


@numba.njit(cache=True, nogil=True, inline="always")
def _median3(keys, lo, n):
    """The median rank of the first, middle and last keys, as the library picks its pivot."""
    a = keys[lo] >> RANK_SHIFT
    b = keys[lo + n // 2] >> RANK_SHIFT
    c = keys[lo + n - 1] >> RANK_SHIFT
    if a < b:
        if b < c:
            return b
        if a < c:
            return c
        return a
    if b < c:
        if a < c:
            return a
        return c
    return b


@numba.njit(cache=True, nogil=True)
def _sift_down(keys, lo, start, end):
    root = start
    while True:
        child = root * 2 + 1
        largest = root
        if child < end and keys[lo + largest] >> RANK_SHIFT < keys[lo + child] >> RANK_SHIFT:
            largest = child
        if child + 1 < end and (
            keys[lo + largest] >> RANK_SHIFT < keys[lo + child + 1] >> RANK_SHIFT
        ):
            largest = child + 1
        if largest == root:
            return
        keys[lo + root], keys[lo + largest] = keys[lo + largest], keys[lo + root]
        root = largest


@numba.njit(cache=True, nogil=True)
def _heapsort(keys, lo, n):
    start = (n - 2) // 2
    while True:
        _sift_down(keys, lo, start, n)
        if start == 0:
            break
        start -= 1
    end = n - 1
    while end > 0:
        keys[lo], keys[lo + end] = keys[lo + end], keys[lo]
        _sift_down(keys, lo, 0, end)
        end -= 1


@numba.njit(cache=True, nogil=True)
def _insertion_sort(keys, lo, n):
    for i in range(1, n):
        key = keys[lo + i]
        # a key of a higher rank is at least the next rank's first key
        above = ((key >> RANK_SHIFT) + 1) << RANK_SHIFT
        j = i
        while j > 0 and keys[lo + j - 1] >= above:
            keys[lo + j] = keys[lo + j - 1]
            j -= 1
        keys[lo + j] = key


@numba.njit(cache=True, nogil=True)
def simultaneous_sort(values, samples, lo, n, segments):
    """`simultaneous_sort(..., use_three_way_partition=True)` of sklearn/utils/_sorting.pyx
    on values[lo:lo+n] and samples alike: `sort_tied_segments` on the values' keys with every
    segment taken as holding tied values, so every segment is sorted as the library sorts
    it."""
    if n == 0:
        return
    by_value = np.argsort(values[lo : lo + n], kind="mergesort")
    keys = np.empty(n, dtype=np.int64)
    rank = 0
    for p in range(n):
        if p > 0 and values[lo + by_value[p]] != values[lo + by_value[p - 1]]:
            rank += 1
        keys[by_value[p]] = (rank << RANK_SHIFT) | by_value[p]
    sort_tied_segments(keys, 0, n, segments, np.arange(n))
    received_values = values[lo : lo + n].copy()
    received_samples = samples[lo : lo + n].copy()
    for p in range(n):
        position = keys[p] & ROW_MASK
        values[lo + p] = received_values[position]
        samples[lo + p] = received_samples[position]


@numba.njit(cache=True, nogil=True, inline="always")
def _holds_ties(tie_count, lo, n):
    """Whether the sorted positions lo..lo+n-1 hold two equal values (`tie_count`: at each
    position, how many positions up to it hold the value before them)."""
    return n > 1 and tie_count[lo + n - 1] > tie_count[lo]


@numba.njit(cache=True, nogil=True)
def sort_tied_segments(keys, lo, n, segments, tie_count):
    """The library's three-way introsort (median-of-three pivot, three-way partition,
    heapsort past the depth limit, insertion sort for 15 or fewer) of keys[lo:lo+n], each a
    value's rank above a row (`RANK_SHIFT`): ranks compare as the values do, so the sort moves
    the rows as the library's moves them with their values, one array moved instead of two.
    The segments it recurses into are kept in `segments` (rows of lo, n, depth left) instead
    of the call stack, and it runs only on the segments whose sorted positions hold tied
    values (`tie_count`, see `_holds_ties`). Its partitions move values by comparisons alone:
    a segment holds the values of its sorted positions, disjoint segments sort alike in any
    order, and one whose values are distinct has one sorted order, whatever the sort does
    inside it. The segments left out are left as they are; every row not tied with another
    still has to be put in its sorted position (`_replay_tied_sort`)."""
    if not _holds_ties(tie_count, lo, n):
        return
    segments[0, 0] = lo
    segments[0, 1] = n
    segments[0, 2] = 2 * int(np.log2(n))
    top = 1
    while top > 0:
        top -= 1
        lo = segments[top, 0]
        n = segments[top, 1]
        max_depth = segments[top, 2]
        sorted_already = False
        while n > 15:
            if max_depth <= 0:
                _heapsort(keys, lo, n)
                sorted_already = True
                break
            max_depth -= 1
            pivot = _median3(keys, lo, n)
            # below the pivot's value: a key under its rank's first; above: at least the next's
            below = pivot << RANK_SHIFT
            above = (pivot + 1) << RANK_SHIFT
            i = 0
            left = 0
            right = n
            while i < right:
                key = keys[lo + i]
                if key < below:
                    keys[lo + i] = keys[lo + left]
                    keys[lo + left] = key
                    i += 1
                    left += 1
                elif key >= above:
                    right -= 1
                    keys[lo + i] = keys[lo + right]
                    keys[lo + right] = key
                else:
                    i += 1
            if _holds_ties(tie_count, lo, left):
                segments[top, 0] = lo
                segments[top, 1] = left
                segments[top, 2] = max_depth
                top += 1
            lo += right
            n -= right
            if not _holds_ties(tie_count, lo, n):
                sorted_already = True
                break
        if not sorted_already:
            _insertion_sort(keys, lo, n)


@numba.njit(cache=True, nogil=True)
def _order_kind(X, feature, order, tie_free, start, end):
    """How the library's sort of the node's rows by `feature` orders them: DISTINCT (the one
    sorted order, `order[start:end]`), ALL_EQUAL (as they are: its three-way partition and
    insertion sort move no equal value) or TIED (the order of tied rows is the sort's own)."""
    if tie_free[feature]:
        return DISTINCT
    all_equal = True
    distinct = True
    first = X[order[start], feature]
    previous = first
    for p in range(start + 1, end):
        value = X[order[p], feature]
        if value != first:
            all_equal = False
        if value == previous:
            distinct = False
        previous = value
    if all_equal:
        return ALL_EQUAL
    return DISTINCT if distinct else TIED


@numba.njit(cache=True, nogil=True)
def _replay_tied_sort(feature, order, samples, start, end, space):
    """The library's sort of samples[start:end] by `feature`, whose values in the node tie:
    `order[start:end]` is one sorted order of the node's rows by it. The sort runs only on
    the segments holding tied values (`sort_tied_segments`); every other row takes its
    position in `order`. `space`: the sort's segments, tie counts and keys, and each row's
    rank among each feature's values (`value_ranks`), then the root's sorts
    (`_replay_sorts`)."""
    segments, tie_count, keys, ranks, _, _ = space
    rank_of = ranks[feature]
    count = 0
    tie_count[start] = 0
    for p in range(start + 1, end):
        if rank_of[order[p]] == rank_of[order[p - 1]]:
            count += 1
        tie_count[p] = count
    for p in range(start, end):
        sample = samples[p]
        keys[p] = (rank_of[sample] << RANK_SHIFT) | sample
    sort_tied_segments(keys, start, end - start, segments, tie_count)
    for p in range(start, end):
        tied_before = p > start and tie_count[p] > tie_count[p - 1]
        tied_after = p + 1 < end and tie_count[p + 1] > tie_count[p]
        if tied_before or tied_after:
            samples[p] = keys[p] & ROW_MASK
        else:
            samples[p] = order[p]


@numba.njit(cache=True, nogil=True)
def _replay_sorts(samples, presorted, log, log_kind, done, target, start, end, space):
    """samples[start:end] as the library's sorts by the node's logged features up to
    log[target] leave them, from the rows as the sorts up to log[done] left them (-1: as the
    node received them): the last DISTINCT sort's order comes from the presort, the TIED sorts
    after it are replayed (`_replay_tied_sort`, its scratch space `space`). Returns `target`.

    Every tree's root receives the same rows in the same order, so at the root the first TIED
    sort after a DISTINCT one, or after none, leaves the same order in every stage whatever
    the targets: the fit keeps it (`space`'s last two: the orders by the feature sorted before,
    the node's received order last, and the feature sorted; whether each is kept yet)."""
    keys, root_orders, root_kept = space[2], space[4], space[5]
    n_features = root_kept.shape[1]
    first = done + 1
    origin = n_features if done == -1 else -1  # what the first sort starts from, if known
    for m in range(target, done, -1):
        if log_kind[m] == DISTINCT:
            order = presorted[log[m]]
            for p in range(start, end):
                samples[p] = order[p]
            first = m + 1
            origin = log[m]
            break
    at_root = start == 0 and end == keys.shape[0] and root_orders.shape[2] == end
    for m in range(first, target + 1):
        feature = log[m]
        if m == first and at_root and origin >= 0:
            kept = root_orders[origin, feature]
            if root_kept[origin, feature]:
                for p in range(end):
                    samples[p] = kept[p]
                continue
            _replay_tied_sort(feature, presorted[feature], samples, start, end, space)
            for p in range(end):
                kept[p] = samples[p]
            root_kept[origin, feature] = True
            continue
        _replay_tied_sort(feature, presorted[feature], samples, start, end, space)
    return target


@numba.njit(cache=True, nogil=True)
def value_ranks(X, rows, presorted):
    """Each row's rank among its feature's values over `rows` (equal values, -0.0 and 0.0
    among them, share one), from `presorted`, the rows sorted by each feature."""
    ranks = np.zeros((X.shape[1], X.shape[0]), dtype=np.int64)
    for f in range(X.shape[1]):
        order = presorted[f]
        rank = 0
        for p in range(1, rows.shape[0]):
            if X[order[p], f] != X[order[p - 1], f]:
                rank += 1
            ranks[f, order[p]] = rank
    return ranks


@numba.njit(cache=True, nogil=True)
def _best_position(
    rows,
    values,
    targets,
    weights,
    start,
    end,
    min_samples_leaf,
    min_weight_leaf,
    sum_total,
    weighted_node,
    best_proxy,
    reverse,
):
    """node_split_best's search over one feature, rows[start:end] sorted by it with their
    values: criterion.reset, then at every position between values more than
    FEATURE_THRESHOLD apart criterion.update and, past the leaf-size checks, the proxy
    improvement. Returns the best proxy so far and, where a position beat `best_proxy`, the
    first position holding it, its threshold and whether missing values go left; position -1
    if none did. `reverse`: scratch space for the updates past the middle (`_reverse_sums`)."""
    _reverse_sums(rows, targets, weights, start, end, sum_total, weighted_node, reverse)
    found_pos = -1
    found_threshold = 0.0
    found_missing_left = False
    sum_left = 0.0
    weighted_left = 0.0
    pos = start
    p = start
    while p < end:
        p += 1
        while p < end and values[p] <= values[p - 1] + FEATURE_THRESHOLD:
            p += 1
        p_prev = p - 1
        if p == end:
            continue
        n_left = p - start
        n_right = end - p
        if n_left < min_samples_leaf or n_right < min_samples_leaf:
            continue
        if (p - pos) <= (end - p):
            sum_left, weighted_left = _forward_sums(
                rows, targets, weights, pos, p, sum_left, weighted_left
            )
        else:
            sum_left = reverse[0, p]
            weighted_left = reverse[1, p]
        pos = p
        weighted_right = weighted_node - weighted_left
        sum_right = sum_total - sum_left
        if weighted_left < min_weight_leaf or weighted_right < min_weight_leaf:
            continue
        proxy = sum_left * sum_left / weighted_left + (sum_right * sum_right / weighted_right)
        if proxy > best_proxy:
            best_proxy = proxy
            found_pos = p
            found_threshold = np.float64(values[p_prev]) / 2.0 + np.float64(values[p]) / 2.0
            found_missing_left = n_left > n_right
    return best_proxy, found_pos, found_threshold, found_missing_left


@numba.njit(cache=True, nogil=True, inline="always")
def _forward_sums(rows, targets, weights, pos, new_pos, sum_left, weighted_left):
    """RegressionCriterion.update from `pos` to `new_pos` where it goes forward: the rows
    between added to the left sum and weight, in order. Inlined where it is called: a call
    per position costs more than the update."""
    for q in range(pos, new_pos):
        i = rows[q]
        w = weights[i]
        sum_left += w * targets[i]
        weighted_left += w
    return sum_left, weighted_left


@numba.njit(cache=True, nogil=True)
def _reverse_sums(rows, targets, weights, low, end, sum_total, weighted_node, reverse):
    """RegressionCriterion.update to each position from end - 1 down to `low` where it goes
    backward (past the middle): reverse_reset, then the rows from the node's end down to the
    position taken off the node's totals, the left sum and weight left in reverse[0] and
    reverse[1] at the position. The library restarts from the end at every such update; the
    sums it reaches are the ones one pass reaches on its way down."""
    sum_left = sum_total
    weighted_left = weighted_node
    for q in range(end - 1, low - 1, -1):
        i = rows[q]
        w = weights[i]
        sum_left -= w * targets[i]
        weighted_left -= w
        reverse[0, q] = sum_left
        reverse[1, q] = weighted_left


@numba.njit(cache=True, nogil=True, inline="always")
def _approximate_search(
    X,
    feature,
    order,
    targets,
    inverse,
    start,
    end,
    min_samples_leaf,
    min_weight_leaf,
    sum_total,
    floor,
):
    """node_split_best's search over `feature` for rows of weight 1, approximately: in the
    presorted `order` (ties by row) and with reciprocals for the divisions. Returns the
    highest proxy improvement, how many positions reach `floor`, the last of them and
    whether two of the node's values are equal (its scan visits every neighbouring pair).
    `_rounding_margin` bounds how far each proxy is from the library's."""
    highest = -np.inf
    reaching = 0
    reached = -1
    tied = False
    sum_left = 0.0
    summed = start
    p = start
    previous = X[order[start], feature]  # the value at p - 1 once p moves
    while p < end:
        p += 1
        while p < end:
            value = X[order[p], feature]
            closer = value <= previous + FEATURE_THRESHOLD
            tied = tied or value == previous
            previous = value
            if not closer:
                break
            p += 1
        if p == end:
            continue
        n_left = p - start
        n_right = end - p
        if n_left < min_samples_leaf or n_right < min_samples_leaf:
            continue
        if n_left < min_weight_leaf or n_right < min_weight_leaf:
            continue
        for q in range(summed, p):
            sum_left += targets[order[q]]
        summed = p
        sum_right = sum_total - sum_left
        proxy = sum_left * sum_left * inverse[n_left] + sum_right * sum_right * inverse[n_right]
        if proxy > highest:
            highest = proxy
        if proxy >= floor:
            reaching += 1
            reached = p
    return highest, reaching, reached, tied


@numba.njit(cache=True, nogil=True)
def _rounding_margin(n, abs_sum, highest):
    """How far `_approximate_search`'s proxies (weights 1, at most `highest` in magnitude)
    can be from the library's at any position, whatever order tied rows come in. A sum of
    at most m terms, however ordered or restarted from the node's total (the update's
    reverse pass), is within 6 gamma_(m+1) abs_sum of any other ordering (Higham, Accuracy
    and Stability of Numerical Algorithms, section 4.2: recursive summation errs by at most
    gamma_(m-1) times the sum of the terms' magnitudes; gamma_k = k u / (1 - k u), u the
    unit roundoff): delta = 16 (n + 2) u abs_sum bounds the left sums' spread, the right
    sums' with their subtraction; both sums are at most 2 abs_sum + 2 delta in magnitude
    and the leaves hold a row at least, so the squares over the leaf sizes spread by at most
    `spread`; twice that, and 32 u of the proxy for the divisions, reciprocals and
    additions."""
    delta = 16.0 * (n + 2) * UNIT_ROUNDOFF * abs_sum
    largest = 2.0 * abs_sum + 2.0 * delta
    delta_right = delta + 4.0 * UNIT_ROUNDOFF * (largest + delta)
    spread = (2.0 * largest + delta) * delta + (2.0 * largest + delta_right) * delta_right
    return 2.0 * spread + 32.0 * UNIT_ROUNDOFF * abs(highest)


@numba.njit(cache=True, nogil=True)
def _best_split(
    X,
    targets,
    weights,
    unit_weights,
    presorted,
    tie_free,
    samples,
    values,
    sort_space,
    reverse,
    features,
    constant_features,
    state,
    n_known_constants,
    start,
    end,
    min_samples_leaf,
    min_weight_leaf,
    sum_total,
    weighted_node,
    abs_sum,
    inverse,
    scratch_int,
    scratch_float,
):
    """node_split_best on samples[start:end]: the same feature draws and constant-feature
    bookkeeping, the same best split (the first position of the first feature, in draw
    order, with the highest proxy improvement), and the rows left in the order the library's
    last sort leaves them when there is a split. Returns (position, feature, threshold,
    missing to the left, the node's constant features); position `end` if none.

    Each drawn feature is searched approximately first (`_approximate_search`, within
    `_rounding_margin` of the library's proxies whatever order tied rows come in). If the
    bounds leave one feature and one position that can hold the best split, that is the
    split: its threshold and sides do not depend on the order of tied rows. Otherwise the
    features they leave are searched as the library searches them, in draw order: one whose
    values in the node are distinct in its presorted order (the one sorted order), one with
    tied values after its sort and those before it are replayed (`_replay_sorts`). The sorts
    up to the last draw are replayed for the partition. Weights other than 1 leave every
    feature to the exact search."""
    n_features = X.shape[1]
    log = scratch_int[0]
    log_kind = scratch_int[1]
    evaluated = scratch_int[2]
    evaluated_at = scratch_int[3]
    lower = scratch_float[0]
    upper = scratch_float[1]
    margin = scratch_float[2]
    f_i = n_features
    n_visited = 0
    n_found_constants = 0
    n_drawn_constants = 0
    n_total_constants = n_known_constants
    n_log = 0
    n_evaluated = 0
    highest_lower = -np.inf
    while f_i > n_total_constants and (
        n_visited < n_features or n_visited <= n_found_constants + n_drawn_constants
    ):
        n_visited += 1
        f_j = _rand_int(n_drawn_constants, f_i - n_found_constants, state)
        if f_j < n_known_constants:
            features[n_drawn_constants], features[f_j] = features[f_j], features[n_drawn_constants]
            n_drawn_constants += 1
            continue
        f_j += n_found_constants
        feature = features[f_j]
        order = presorted[feature]
        # the library's values[start] and values[end - 1]: the extremes
        lowest = X[order[start], feature]
        largest = X[order[end - 1], feature]
        constant = largest <= lowest + FEATURE_THRESHOLD
        # DISTINCT or TIED takes a scan of the values, which the approximate search makes
        unscanned = not (tie_free[feature] or largest == lowest)
        if unscanned and (constant or not unit_weights):
            kind = _order_kind(X, feature, order, tie_free, start, end)
            unscanned = False
        else:
            kind = ALL_EQUAL if largest == lowest else DISTINCT
        if kind != ALL_EQUAL:  # a sort of equal values leaves the rows as they are
            log[n_log] = feature
            log_kind[n_log] = kind
            n_log += 1
        if constant:
            features[f_j], features[n_total_constants] = features[n_total_constants], features[f_j]
            n_found_constants += 1
            n_total_constants += 1
            continue
        f_i -= 1
        features[f_i], features[f_j] = features[f_j], features[f_i]
        k = n_evaluated
        n_evaluated += 1
        evaluated[k] = feature
        evaluated_at[k] = n_log - 1
        if unit_weights:
            highest, _, _, tied = _approximate_search(
                X,
                feature,
                order,
                targets,
                inverse,
                start,
                end,
                min_samples_leaf,
                min_weight_leaf,
                sum_total,
                np.inf,
            )
            if unscanned and tied:
                log_kind[n_log - 1] = TIED
            margin[k] = _rounding_margin(end - start, abs_sum, highest)
            lower[k] = highest - margin[k]
            upper[k] = highest + margin[k]
        else:  # weights other than 1: no bound, every feature searched exactly
            lower[k] = -np.inf
            upper[k] = np.inf
        if lower[k] > highest_lower:
            highest_lower = lower[k]
    # constant features keep their order for the node's children
    for k in range(n_known_constants):
        features[k] = constant_features[k]
    for k in range(n_known_constants, n_known_constants + n_found_constants):
        constant_features[k] = features[k]

    best_pos = end
    best_feature = 0
    best_threshold = 0.0
    best_missing_left = False
    n_candidates = 0
    candidate = -1
    for k in range(n_evaluated):
        if upper[k] >= highest_lower:
            n_candidates += 1
            candidate = k
    settled = False
    if n_candidates == 1 and highest_lower > -np.inf:
        # one feature can hold the best split: its one position that can, if one
        feature = evaluated[candidate]
        order = presorted[feature]
        _, reaching, position, _ = _approximate_search(
            X,
            feature,
            order,
            targets,
            inverse,
            start,
            end,
            min_samples_leaf,
            min_weight_leaf,
            sum_total,
            highest_lower - margin[candidate],
        )
        if reaching == 1:
            best_pos = position
            best_feature = feature
            best_threshold = np.float64(X[order[position - 1], feature]) / 2.0 + (
                np.float64(X[order[position], feature]) / 2.0
            )
            best_missing_left = (position - start) > (end - position)
            settled = True
    done = -1
    if not settled:
        # the library's search in draw order, over the features that may hold the best split
        best_proxy = -np.inf
        for k in range(n_evaluated):
            if upper[k] < highest_lower:
                continue
            feature = evaluated[k]
            if log_kind[evaluated_at[k]] == DISTINCT:
                rows = presorted[feature]
            else:
                done = _replay_sorts(
                    samples, presorted, log, log_kind, done, evaluated_at[k], start, end, sort_space
                )
                rows = samples
            for p in range(start, end):
                values[p] = X[rows[p], feature]
            best_proxy, position, threshold, missing_left = _best_position(
                rows,
                values,
                targets,
                weights,
                start,
                end,
                min_samples_leaf,
                min_weight_leaf,
                sum_total,
                weighted_node,
                best_proxy,
                reverse,
            )
            if position >= 0:
                best_pos = position
                best_feature = feature
                best_threshold = threshold
                best_missing_left = missing_left
    if best_pos < end and n_log > 0:
        _replay_sorts(samples, presorted, log, log_kind, done, n_log - 1, start, end, sort_space)
    return best_pos, best_feature, best_threshold, best_missing_left, n_total_constants


@numba.njit(cache=True, nogil=True)
def _grow_tree(
    X,
    targets,
    weights,
    seed,
    max_depth,
    min_samples_split,
    min_samples_leaf,
    min_weight_leaf,
    min_impurity_decrease,
    initial_samples,
    weighted_n_samples,
    unit_weights,
    inverse,
    presorted_all,
    tie_free,
    work,
    presorted,
    values,
    sort_space,
    nodes_left,
    nodes_right,
    nodes_feature,
    nodes_threshold,
    nodes_impurity,
    nodes_n_samples,
    nodes_weighted,
    nodes_missing_left,
    nodes_value,
):
    """One tree as DepthFirstTreeBuilder.build with BestSplitter and MSE grows it; writes the
    nodes and returns (node_count, max_depth_seen). `work`, `presorted` and `values` are
    scratch space: the samples, the side each goes to and a buffer; the rows sorted by each
    feature; the node's values of a feature searched exactly. `sort_space`: the replayed
    sorts' (`_replay_tied_sort`)."""
    n_features = X.shape[1]
    n_samples = initial_samples.shape[0]
    samples = work[0]
    goes_left = work[1]
    buffer = work[2]
    # (element by element: a slice assignment's shape checks cost seconds of compiling)
    for p in range(n_samples):
        samples[p] = initial_samples[p]
    for f in range(n_features):
        for p in range(n_samples):
            presorted[f, p] = presorted_all[f, p]
    features = np.arange(n_features)
    constant_features = np.empty(n_features, dtype=np.int64)
    state = np.array([seed], dtype=np.int64)
    scratch_int = np.empty((4, n_features), dtype=np.int64)
    scratch_float = np.empty((3, n_features))
    reverse = np.empty((2, n_samples))
    capacity = nodes_left.shape[0]
    stack_start = np.empty(capacity + 1, dtype=np.int64)
    stack_end = np.empty(capacity + 1, dtype=np.int64)
    stack_depth = np.empty(capacity + 1, dtype=np.int64)
    stack_parent = np.empty(capacity + 1, dtype=np.int64)
    stack_is_left = np.empty(capacity + 1, dtype=np.bool_)
    stack_impurity = np.empty(capacity + 1)
    stack_constants = np.empty(capacity + 1, dtype=np.int64)
    top = 0
    stack_start[0] = 0
    stack_end[0] = n_samples
    stack_depth[0] = 0
    stack_parent[0] = TREE_UNDEFINED
    stack_is_left[0] = False
    stack_impurity[0] = np.inf
    stack_constants[0] = 0
    top = 1
    node_count = 0
    max_depth_seen = -1
    first = True
    # the split record persists across nodes, as the builder's does
    split_pos = 0
    split_feature = 0
    split_threshold = 0.0
    split_improvement = -np.inf
    split_impurity_left = np.inf
    split_impurity_right = np.inf
    split_missing_left = False
    while top > 0:
        top -= 1
        start = stack_start[top]
        end = stack_end[top]
        depth = stack_depth[top]
        parent = stack_parent[top]
        is_left = stack_is_left[top]
        impurity = stack_impurity[top]
        n_constant = stack_constants[top]
        n_node_samples = end - start
        # node_reset: the criterion's sums over the node's samples in their order
        sum_total = 0.0
        sq_sum_total = 0.0
        weighted_node = 0.0
        abs_sum = 0.0
        for p in range(start, end):
            i = samples[p]
            w = weights[i]
            w_y = w * targets[i]
            sum_total += w_y
            sq_sum_total += w_y * targets[i]
            weighted_node += w
            abs_sum += abs(w_y)
        is_leaf = (
            depth >= max_depth
            or n_node_samples < min_samples_split
            or n_node_samples < 2 * min_samples_leaf
            or weighted_node < 2 * min_weight_leaf
        )
        if first:
            mean = sum_total / weighted_node
            impurity = sq_sum_total / weighted_node - mean * mean
            first = False
        is_leaf = is_leaf or impurity <= EPSILON
        if not is_leaf:
            best_pos, best_feature, best_threshold, best_missing_left, n_total_constants = (
                _best_split(
                    X,
                    targets,
                    weights,
                    unit_weights,
                    presorted,
                    tie_free,
                    samples,
                    values,
                    sort_space,
                    reverse,
                    features,
                    constant_features,
                    state,
                    n_constant,
                    start,
                    end,
                    min_samples_leaf,
                    min_weight_leaf,
                    sum_total,
                    weighted_node,
                    abs_sum,
                    inverse,
                    scratch_int,
                    scratch_float,
                )
            )
            improvement = -np.inf
            impurity_left = np.inf
            impurity_right = np.inf
            if best_pos < end:
                # partition_samples_final
                partition_start = start
                partition_end = end
                while partition_start < partition_end:
                    sample = samples[partition_start]
                    if np.float64(X[sample, best_feature]) <= best_threshold:
                        partition_start += 1
                    else:
                        partition_end -= 1
                        samples[partition_start] = samples[partition_end]
                        samples[partition_end] = sample
                # criterion.reset, update(best_pos)
                if (best_pos - start) <= (end - best_pos):
                    sum_left, weighted_left = _forward_sums(
                        samples, targets, weights, start, best_pos, 0.0, 0.0
                    )
                else:
                    _reverse_sums(
                        samples, targets, weights, best_pos, end, sum_total, weighted_node, reverse
                    )
                    sum_left = reverse[0, best_pos]
                    weighted_left = reverse[1, best_pos]
                weighted_right = weighted_node - weighted_left
                sum_right = sum_total - sum_left
                # children_impurity
                sq_sum_left = 0.0
                for p in range(start, best_pos):
                    i = samples[p]
                    sq_sum_left += weights[i] * targets[i] * targets[i]
                sq_sum_right = sq_sum_total - sq_sum_left
                mean_left = sum_left / weighted_left
                mean_right = sum_right / weighted_right
                impurity_left = sq_sum_left / weighted_left - mean_left * mean_left
                impurity_right = sq_sum_right / weighted_right - mean_right * mean_right
                improvement = (weighted_node / weighted_n_samples) * (
                    impurity
                    - (weighted_right / weighted_node * impurity_right)
                    - (weighted_left / weighted_node * impurity_left)
                )
            n_constant = n_total_constants
            split_pos = best_pos
            split_feature = best_feature
            split_threshold = best_threshold
            split_improvement = improvement
            split_impurity_left = impurity_left
            split_impurity_right = impurity_right
            split_missing_left = best_missing_left
            is_leaf = split_pos >= end or split_improvement + EPSILON < min_impurity_decrease
        node_id = node_count
        nodes_impurity[node_id] = impurity
        nodes_n_samples[node_id] = n_node_samples
        nodes_weighted[node_id] = weighted_node
        if parent != TREE_UNDEFINED:
            if is_left:
                nodes_left[parent] = node_id
            else:
                nodes_right[parent] = node_id
        if is_leaf:
            nodes_left[node_id] = TREE_LEAF
            nodes_right[node_id] = TREE_LEAF
            nodes_feature[node_id] = TREE_UNDEFINED
            nodes_threshold[node_id] = TREE_UNDEFINED
            nodes_missing_left[node_id] = 0
        else:
            nodes_feature[node_id] = split_feature
            nodes_threshold[node_id] = split_threshold
            nodes_missing_left[node_id] = 1 if split_missing_left else 0
        node_count += 1
        nodes_value[node_id] = sum_total / weighted_node
        if not is_leaf:
            if depth + 1 < max_depth:
                # the children's rows, still sorted by every feature
                for p in range(start, end):
                    goes_left[samples[p]] = 1 if p < split_pos else 0
                for f in range(n_features):
                    order = presorted[f]
                    n_left_rows = start
                    n_right_rows = 0
                    # written to both sides, the counts moved by the side: no branch to
                    # mispredict on the rows' sides, which follow no pattern
                    for p in range(start, end):
                        sample = order[p]
                        left = goes_left[sample]
                        order[n_left_rows] = sample
                        buffer[n_right_rows] = sample
                        n_left_rows += left
                        n_right_rows += 1 - left
                    for k in range(n_right_rows):
                        order[split_pos + k] = buffer[k]
            stack_start[top] = split_pos
            stack_end[top] = end
            stack_depth[top] = depth + 1
            stack_parent[top] = node_id
            stack_is_left[top] = False
            stack_impurity[top] = split_impurity_right
            stack_constants[top] = n_constant
            top += 1
            stack_start[top] = start
            stack_end[top] = split_pos
            stack_depth[top] = depth + 1
            stack_parent[top] = node_id
            stack_is_left[top] = True
            stack_impurity[top] = split_impurity_left
            stack_constants[top] = n_constant
            top += 1
        if depth > max_depth_seen:
            max_depth_seen = depth
    return node_count, max_depth_seen


@numba.njit(cache=True, nogil=True)
def grow_boosting_stages(
    X,
    y,
    raw,
    weights,
    seeds,
    learning_rate,
    max_depth,
    min_samples_split,
    min_samples_leaf,
    min_weight_leaf,
    min_impurity_decrease,
    initial_samples,
    presorted,
    tie_free,
    nodes_left,
    nodes_right,
    nodes_feature,
    nodes_threshold,
    nodes_impurity,
    nodes_n_samples,
    nodes_weighted,
    nodes_missing_left,
    nodes_value,
    node_counts,
    depths,
    raw_after,
):
    """Stage s of `seeds`: the negative gradient of the half squared error at `raw`, the tree
    grown on it (nodes_*[s], node_counts[s], depths[s]), then `raw` += learning_rate times the
    leaf value of each row (copied to raw_after[s]), as GradientBoostingRegressor's
    `_fit_stage` and `_update_terminal_regions` do."""
    n = X.shape[0]
    targets = np.empty(n)
    work = np.empty((3, n), dtype=np.int64)
    presorted_work = np.empty_like(presorted)
    values = np.empty(initial_samples.shape[0], dtype=np.float32)
    # the replayed sorts' segments, tie counts and keys, the rows' ranks by each feature, and
    # the root's first sorts, kept where they take little memory (`_replay_sorts`)
    n_rows = initial_samples.shape[0]
    n_features = X.shape[1]
    kept_rows = n_rows if (n_features + 1) * n_features * n_rows <= ROOT_ORDERS_LIMIT else 0
    sort_space = (
        np.empty((n_rows // 2 + 2, 3), dtype=np.int64),
        np.empty(n_rows, dtype=np.int64),
        np.empty(n_rows, dtype=np.int64),
        value_ranks(X, initial_samples, presorted),
        np.empty((n_features + 1, n_features, kept_rows), dtype=np.int64),
        np.zeros((n_features + 1, n_features), dtype=np.bool_),
    )
    # the splitter's total weight: every row's, summed in row order
    weighted_n_samples = 0.0
    n_unit_weights = 0
    for i in range(n):
        weighted_n_samples += weights[i]
        if weights[i] == 1.0:
            n_unit_weights += 1
    unit_weights = n_unit_weights == n
    # the leaf sizes' reciprocals, for the approximate searches
    inverse = np.empty(n + 1)
    inverse[0] = np.inf
    for k in range(1, n + 1):
        inverse[k] = 1.0 / k
    for stage in range(seeds.shape[0]):
        for i in range(n):
            targets[i] = -(raw[i] - y[i])
        node_counts[stage], depths[stage] = _grow_tree(
            X,
            targets,
            weights,
            seeds[stage],
            max_depth,
            min_samples_split,
            min_samples_leaf,
            min_weight_leaf,
            min_impurity_decrease,
            initial_samples,
            weighted_n_samples,
            unit_weights,
            inverse,
            presorted,
            tie_free,
            work,
            presorted_work,
            values,
            sort_space,
            nodes_left[stage],
            nodes_right[stage],
            nodes_feature[stage],
            nodes_threshold[stage],
            nodes_impurity[stage],
            nodes_n_samples[stage],
            nodes_weighted[stage],
            nodes_missing_left[stage],
            nodes_value[stage],
        )
        left = nodes_left[stage]
        right = nodes_right[stage]
        feature = nodes_feature[stage]
        threshold = nodes_threshold[stage]
        value = nodes_value[stage]
        for i in range(n):
            node = 0
            while left[node] != TREE_LEAF:
                if np.float64(X[i, feature[node]]) <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            raw[i] = raw[i] + learning_rate * value[node]
            raw_after[stage, i] = raw[i]
