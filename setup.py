from setuptools import find_packages, setup

setup(
    name="drlhp",
    version="0.1.0",
    description="Deep Reinforcement Learning from Human Preferences as a gymnasium env wrapper (PyTorch)",
    long_description=open("README.md").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    packages=find_packages(include=["drlhp", "drlhp.*"]),
    package_data={"drlhp": ["web_static/*", "py.typed"]},
    python_requires=">=3.9",
    install_requires=[
        "gymnasium>=1.0,<2",
        "numpy>=1.24",
        # A range, not a pin: an installed torch 2.x CPU build satisfies it without a download.
        "torch>=2.1,<3",
        "tqdm>=4.60",
    ],
    entry_points={"console_scripts": ["drlhp=drlhp.cli:main"]},
    extras_require={
        "gui": ["opencv-python>=4.8"],
        "web": ["aiohttp>=3.9", "pillow>=9"],
        "sb3": ["stable-baselines3>=2.3"],
        "examples": ["stable-baselines3>=2.3", "ale-py>=0.9"],
        "plot": ["matplotlib>=3.7"],
        "tensorboard": ["tensorboard>=2.10"],
        # RLlib's new API stack as of 2.60 (EnvRunner sampling, connectors, RLlibCallback).
        "ray": ["ray[rllib]>=2.60,<3"],
        # ruff and mypy pinned: a newer release may add rules or checks, and CI fails on any finding.
        "dev": ["pytest>=7", "pytest-timeout>=2", "ruff==0.17.6", "mypy==2.4.1", "scipy>=1.10",
                "stable-baselines3>=2.3", "opencv-python>=4.8", "matplotlib>=3.7", "tensorboard>=2.10", "aiohttp>=3.9",
                "pillow>=9", "playwright>=1.40", "ray[rllib]>=2.60,<3"],
    },
)
