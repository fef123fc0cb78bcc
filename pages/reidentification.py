import streamlit as st

st.title("reidentification")
st.info("This page is being built.")
