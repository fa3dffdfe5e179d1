"""The H100 vs RTX 3090 study: computed from the tables, and the README quotes what the code computes."""

from __future__ import annotations

from pathlib import Path

from coloc_tables import lucid_folder

from simcluster.colocation.folders import committed_measurements

H100 = committed_measurements()["h100"]


def test_the_study_compares_the_same_pairs_and_the_readme_quotes_it(tmp_path: Path) -> None:
    lucid_folder()  # or skip: the public table is not in the repository
    from simcluster.colocation.compare import compare, plot_png, table_markdown

    comparison = compare(H100)
    table = comparison.table.set_index("workload")
    assert len(table) == 14 and comparison.gpu.startswith("NVIDIA H100")
    both = table[table.same_pairs > 0]
    assert len(both) == 9 and (both.gpu > both.rtx3090).all()  # every workload slows more on the H100
    assert (table.measured >= 1.0).all() and (table.calibrated >= 1.0).all()
    assert table_markdown(comparison) in (H100 / "README.md").read_text()
    assert plot_png(comparison)[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_study_needs_measured_tables(tmp_path: Path) -> None:
    from simcluster.colocation.compare import main

    assert main([str(tmp_path)]) == 2
