"""What the render tests expect word for word of every config.pbtxt."""

# The backend's inputs and outputs, as every config.pbtxt declares them (NVIDIA's vLLM backend's names and types;
# the return_* inputs are what Triton's OpenAI frontend sends from Triton 2.60 / 2.64 for its usage figures)
INTERFACE = """input [
  {
    name: "text_input"
    data_type: TYPE_STRING
    dims: [ 1 ]
  },
  {
    name: "stream"
    data_type: TYPE_BOOL
    dims: [ 1 ]
    optional: true
  },
  {
    name: "sampling_parameters"
    data_type: TYPE_STRING
    dims: [ 1 ]
    optional: true
  },
  {
    name: "exclude_input_in_output"
    data_type: TYPE_BOOL
    dims: [ 1 ]
    optional: true
  },
  {
    name: "return_num_input_tokens"
    data_type: TYPE_BOOL
    dims: [ 1 ]
    optional: true
  },
  {
    name: "return_num_output_tokens"
    data_type: TYPE_BOOL
    dims: [ 1 ]
    optional: true
  },
  {
    name: "return_logprobs"
    data_type: TYPE_BOOL
    dims: [ 1 ]
    optional: true
  }
]
output [
  {
    name: "text_output"
    data_type: TYPE_STRING
    dims: [ -1 ]
  },
  {
    name: "num_input_tokens"
    data_type: TYPE_UINT32
    dims: [ 1 ]
  },
  {
    name: "num_output_tokens"
    data_type: TYPE_UINT32
    dims: [ -1 ]
  },
  {
    name: "logprobs"
    data_type: TYPE_STRING
    dims: [ -1 ]
  }
]
"""
