"""Every committed data file has exactly one maker, and the README says which."""

from pathlib import Path

from gpu_lessons import makers

ROOT = Path(__file__).resolve().parents[1]


def test_every_committed_data_file_has_exactly_one_maker():
    problems = []
    for gpu, path in makers.committed_files(ROOT / "data"):
        claimed = makers.claims(path)
        if len(claimed) != 1:
            problems.append(f"data/{gpu}/{path}: {len(claimed)} makers ({[m.command for m in claimed]})")
    assert not problems, "\n".join(problems)


def test_every_maker_of_the_reference_gpu_made_something():
    files = [path for gpu, path in makers.committed_files(ROOT / "data") if gpu == "nvidia-h200"]
    idle = [m.command for m in makers.makers() if not any(makers.claims(f) == [m] for f in files)]
    assert not idle, f"makers with no committed file: {idle}"


def test_the_readme_table_is_the_makers_table():
    readme = (ROOT / "README.md").read_text()
    assert makers.markdown() in readme, (
        "the README's data table differs from gpu_lessons.makers: paste "
        "`python -c 'from gpu_lessons import makers; print(makers.markdown())'`")
