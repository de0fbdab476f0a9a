"""flag_array: a flag column of any dtype pandas 2 or 3 reads it as, missing flags False."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from benchmark.contract.values import flag_array

EXPECTED = [True, False, False, True]


@pytest.mark.parametrize("column", [
    pd.Series([True, False, None, True], dtype=object),                    # parquet bools with a gap, read as object
    pd.Series([1.0, 0.0, np.nan, 1.0]),                                      # the same as floats
    pd.Series([True, False, pd.NA, True], dtype="boolean"),                  # pandas' nullable bool
    pd.Series([True, False, None, True], dtype=pd.ArrowDtype(pa.bool_())),   # Arrow-backed
    pd.Series([True, False, False, True], index=[7, 3, 9, 1]),               # plain bools, an index out of order
])
def test_a_flag_column_reads_as_bools_with_gaps_false(column):
    out = flag_array(column)
    assert out.dtype == bool
    assert out.tolist() == EXPECTED


def test_an_empty_column_gives_an_empty_array():
    assert flag_array(pd.Series([], dtype=object)).shape == (0,)


def test_no_downcasting_warning_on_an_object_column():
    # pandas 2 warns that fillna(False) on an object column will stop downcasting (make test-pandas2)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flag_array(pd.Series([True, None], dtype=object))
