import streamlit as st

st.title("differencing")
st.info("This page is being built.")
