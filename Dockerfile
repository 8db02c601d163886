# trapbot: slim Python 3.11, CPU-only torch, a non-root user; migrates, then serves.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1

RUN useradd --create-home --uid 10001 trapbot
WORKDIR /app

# torch first, from PyTorch's CPU index, so the CUDA build never lands in the image.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

COPY pyproject.toml README.md ./
COPY bot ./bot
COPY cards ./cards
COPY grader ./grader
COPY sims ./sims
COPY migrations ./migrations
RUN pip install .

USER trapbot
ENV TRAPBOT_SIM_CACHE_DIR=/home/trapbot/.cache/trapbot/sims
CMD ["sh", "-c", "trapbot migrate && trapbot run"]
