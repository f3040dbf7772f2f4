from __future__ import annotations

import pytest

from ecocompute.published.archs import arch_from_product_name, normalise_arch_choice

REAL_NAMES = [
    ("NVIDIA H200", "hopper"),
    ("NVIDIA H100 80GB HBM3", "hopper"),
    ("NVIDIA H100 PCIe", "hopper"),
    ("NVIDIA H800", "hopper"),
    ("NVIDIA GH200 480GB", "hopper"),
    ("NVIDIA GeForce RTX 4090", "ada"),
    ("NVIDIA GeForce RTX 4090 D", "ada"),
    ("NVIDIA GeForce RTX 4060 Ti", "ada"),
    ("NVIDIA L4", "ada"),
    ("NVIDIA L40S", "ada"),
    ("NVIDIA L40", "ada"),
    ("NVIDIA RTX 6000 Ada Generation", "ada"),
    ("NVIDIA RTX 4000 Ada Generation", "ada"),
    ("NVIDIA RTX 2000 Ada Generation Laptop GPU", "ada"),
    ("Tesla T4", "turing"),
    ("NVIDIA T4", "turing"),
    ("NVIDIA T1000", "turing"),
    ("NVIDIA T400 4GB", "turing"),
    ("Quadro RTX 5000", "turing"),
    ("Quadro RTX 6000", "turing"),
    ("NVIDIA TITAN RTX", "turing"),
    ("NVIDIA GeForce RTX 2080 Ti", "turing"),
    ("NVIDIA A100-SXM4-80GB", "ampere"),
    ("NVIDIA A100 80GB PCIe", "ampere"),
    ("NVIDIA A800 80GB PCIe", "ampere"),
    ("NVIDIA A10G", "ampere"),
    ("NVIDIA A10", "ampere"),
    ("NVIDIA A16", "ampere"),
    ("NVIDIA A2", "ampere"),
    ("NVIDIA A30", "ampere"),
    ("NVIDIA A40", "ampere"),
    ("NVIDIA RTX A6000", "ampere"),
    ("NVIDIA RTX A2000 12GB", "ampere"),
    ("NVIDIA GeForce RTX 3090", "ampere"),
    ("NVIDIA GeForce RTX 3060 Laptop GPU", "ampere"),
    ("NVIDIA GeForce RTX 5090", "blackwell"),
    ("NVIDIA GeForce RTX 5070 Ti", "blackwell"),
    ("NVIDIA B200", "blackwell"),
    ("NVIDIA B100", "blackwell"),
    ("NVIDIA GB200", "blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "blackwell"),
    ("Tesla V100-SXM2-16GB", "volta"),
    ("Tesla V100-PCIE-32GB", "volta"),
    ("NVIDIA TITAN V", "volta"),
    ("NVIDIA GeForce GTX 1080 Ti", "unknown"),
    ("Tesla P100-PCIE-16GB", "unknown"),
    ("AMD Instinct MI300X", "unknown"),
]


@pytest.mark.parametrize(("name", "arch"), REAL_NAMES)
def test_arch_from_real_product_names(name, arch):
    assert arch_from_product_name(name) == arch


def test_choice_accepts_classes_auto_and_product_names():
    assert normalise_arch_choice("auto") == ("auto", None)
    assert normalise_arch_choice("Hopper") == ("hopper", None)
    assert normalise_arch_choice("RTX 4090") == ("ada", "RTX 4090")
    with pytest.raises(ValueError):
        normalise_arch_choice("pascal")
