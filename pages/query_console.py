import streamlit as st

st.title("query_console")
st.info("This page is being built.")
