"""The shipped real data load as published."""

import numpy as np

from smoothece import datasets


def test_solar_flares_columns(solar):
    # Seven methods issued no forecast in the file: they are left out, not read as 1.0.
    assert sorted(solar) == ["AMOS", "ASSA", "CLIM120", "DAFFS", "GDAFFS", "MCEVOL", "MCSTAT", "NICT", "NJIT",
                             "NOAA", "SIDC"]
    assert solar["DAFFS"].f.size == 731 and solar["NJIT"].f.size == 471 and solar["AMOS"].f.size == 660
    assert solar["DAFFS"].f[:2].tolist() == [0.778454, 0.667816]  # first rows of the CSV
    assert solar["DAFFS"].y[:2].tolist() == [1, 0]
    assert (solar["MCSTAT"].f == -0.01).sum() > 0  # the real fault is kept
    for d in solar.values():
        assert np.all(np.isfinite(d.f)) and set(np.unique(d.y)) <= {0, 1}


def test_imagenet_resnet34(resnet):
    assert resnet.f.size == 50_000
    assert resnet.y.mean() == np.float64(resnet.y.sum()) / 50_000
    assert 0.74 < resnet.y.mean() < 0.76  # top-1 accuracy of ResNet-34
    assert np.all((resnet.f > 0) & (resnet.f <= 1))


def test_paths():
    assert datasets.path("solar_flares_c1.csv").endswith("solar_flares_c1.csv")
