"""The five papers this benchmark implements: one place for their names and citations.

Keys are short and stable; probes, scores, dataset cards and metric cards refer to a
paper by key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    authors: str
    venue: str
    url: str
    bibtex: str
    label: str = ""  # the short name the project cites it by ("GEP"); the key when empty

    @property
    def short(self) -> str:
        return f"{self.authors.split(',')[0].split(' ')[-1]} et al., {self.venue}"


PAPERS: dict[str, Paper] = {
    "gep": Paper(
        key="gep",
        label="GEP",
        title="Auditing Gender Presentation Differences in Text-to-Image Models",
        authors="Yanzhe Zhang, Lu Jiang, Greg Turk, Diyi Yang",
        venue="EAAMO 2024",
        url="https://arxiv.org/abs/2302.03675",
        bibtex="""@inproceedings{zhang2024gep,
  title     = {Auditing Gender Presentation Differences in Text-to-Image Models},
  author    = {Zhang, Yanzhe and Jiang, Lu and Turk, Greg and Yang, Diyi},
  booktitle = {Proceedings of the 4th ACM Conference on Equity and Access in Algorithms, Mechanisms, and Optimization (EAAMO)},
  year      = {2024},
  eprint    = {2302.03675},
  archivePrefix = {arXiv}
}""",
    ),
    "dalleval": Paper(
        key="dalleval",
        label="DALL-Eval",
        title="DALL-Eval: Probing the Reasoning Skills and Social Biases of Text-to-Image Generation Models",
        authors="Jaemin Cho, Abhay Zala, Mohit Bansal",
        venue="ICCV 2023",
        url="https://arxiv.org/abs/2202.04053",
        bibtex="""@inproceedings{cho2023dalleval,
  title     = {DALL-Eval: Probing the Reasoning Skills and Social Biases of Text-to-Image Generation Models},
  author    = {Cho, Jaemin and Zala, Abhay and Bansal, Mohit},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision (ICCV)},
  year      = {2023}
}""",
    ),
    "pst": Paper(
        key="pst",
        label="PST",
        title="The Male CEO and the Female Assistant: Probing Gender Biases in Text-To-Image Models Through Paired Stereotype Test",
        authors="Yixin Wan, Kai-Wei Chang",
        venue="arXiv 2024",
        url="https://arxiv.org/abs/2402.11089",
        bibtex="""@article{wan2024pst,
  title   = {The Male CEO and the Female Assistant: Probing Gender Biases in Text-To-Image Models Through Paired Stereotype Test},
  author  = {Wan, Yixin and Chang, Kai-Wei},
  journal = {arXiv preprint arXiv:2402.11089},
  year    = {2024}
}""",
    ),
    "mcas": Paper(
        key="mcas",
        label="MCAS",
        title="Multimodal Composite Association Score: Measuring Gender Bias in Generative Multimodal Models",
        authors="Abhishek Mandal, Susan Leavy, Suzanne Little",
        venue="BIAS @ ECML-PKDD 2023",
        url="https://arxiv.org/abs/2304.13855",
        bibtex="""@inproceedings{mandal2023mcas,
  title     = {Multimodal Composite Association Score: Measuring Gender Bias in Generative Multimodal Models},
  author    = {Mandal, Abhishek and Leavy, Susan and Little, Suzanne},
  booktitle = {Advances in Bias and Fairness in Information Retrieval (BIAS 2023)},
  year      = {2023},
  eprint    = {2304.13855},
  archivePrefix = {arXiv}
}""",
    ),
    "diffusion_bias": Paper(
        key="diffusion_bias",
        label="Diffusion Bias",
        title="Generated Bias: Auditing Internal Bias Dynamics of Text-To-Image Generative Models",
        authors="Abhishek Mandal, Susan Leavy, Suzanne Little",
        venue="arXiv 2024",
        url="https://arxiv.org/abs/2410.07884",
        bibtex="""@article{mandal2024generatedbias,
  title   = {Generated Bias: Auditing Internal Bias Dynamics of Text-To-Image Generative Models},
  author  = {Mandal, Abhishek and Leavy, Susan and Little, Suzanne},
  journal = {arXiv preprint arXiv:2410.07884},
  year    = {2024}
}""",
    ),
}


def paper_label(key: str) -> str:
    """The short name a paper is cited by (``"GEP"``), or ``key`` for a paper not registered."""
    paper = PAPERS.get(str(key))
    return paper.label or paper.key if paper else str(key)


def register_paper(paper: Paper) -> Paper:
    """Add a paper's citation (a task folder or plugin of a paper not listed above)."""
    if paper.key in PAPERS and PAPERS[paper.key] != paper:
        raise ValueError(f"paper {paper.key!r} is already cited differently")
    PAPERS[paper.key] = paper
    return paper
