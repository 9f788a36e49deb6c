//! placeholder: AxKit-compatible selection and configuration (being written)
