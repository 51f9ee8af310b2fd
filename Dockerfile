# One image for both processes (server and worker); compose.yaml picks the command.
FROM python:3.11-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
# torch's CPU build first, or pip resolves sentence-transformers to several GB of CUDA wheels.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
COPY server ./server
COPY worker ./worker
COPY shared ./shared
COPY learning_memory ./learning_memory
RUN pip install --no-cache-dir .
# The model's ONNX export, made once here rather than by each container's first worker.
ENV LMS_MODELS_DIR=/opt/learning-memory/models
RUN python -m learning_memory.worker.embedding.export
ENV LMS_DATA_DIR=/data
VOLUME ["/data"]
CMD ["learning-memory", "serve", "--transport", "http", "--host", "0.0.0.0"]
