import streamlit as st

st.title("noise")
st.info("This page is being built.")
